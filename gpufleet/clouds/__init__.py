"""What the application knows of each cloud: the registry, the backend protocol, and per cloud its stack-file
models, stack checks, resource names and offline answers. The Pulumi components are in components/clouds/."""
