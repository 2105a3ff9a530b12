from iris_cli.app import main

main()
