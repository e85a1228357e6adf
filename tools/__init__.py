"""Developer tools that sit above every layer: the config reference generator."""
