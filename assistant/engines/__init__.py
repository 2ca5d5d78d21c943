"""The engines the assistant builds and runs itself (llama-server): their builds, their toolkits, doctor's checks of them."""
