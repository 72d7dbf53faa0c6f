"""The command line and the REPL: main, the prompt, completion, the lexer, progress."""
