"""Placeholder until this command is built."""
HELP = "(not built yet)"


def add_arguments(parser):
    pass


def run(args):
    raise NotImplementedError("eval")
