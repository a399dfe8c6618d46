"""AWS: the backend, stack-file models, stack checks, resource names and offline answers."""
