"""What every tool's parser shares."""


class ParseError(ValueError):
    """A tool's output that is not what the parser expects (incomplete, an error, another tool)."""
