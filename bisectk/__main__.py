from bisectk.cli import entry

entry()
