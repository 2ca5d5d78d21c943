"""The `assistant` command's commands, one module each; each registers its parser and the function it runs."""
