"""GPU tools (doctor, plan, presets, status): facts about the machine and the model, and rules over them; imports nothing of ours outside itself."""
