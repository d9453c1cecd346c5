"""The inference system of issue 9: model preparation, servers and stand-ins, the raw model rate."""
