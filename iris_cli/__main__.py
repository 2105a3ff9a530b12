from iris_cli.entry import main

main()
