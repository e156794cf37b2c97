"""The command line: argument parsing only; each command calls the library."""
