"""The ``iris`` commands, one Typer app per module (see ``iris_cli.app.COMMANDS``)."""
