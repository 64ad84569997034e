from cambrian.cli import main

main()
