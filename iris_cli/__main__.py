from iris_cli.entry import run

run()
