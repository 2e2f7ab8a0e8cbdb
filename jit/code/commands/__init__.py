"""The ``jit-synth`` sub-commands: each module adds its own arguments and runs one command."""
