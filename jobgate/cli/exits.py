"""The exit statuses every command shares."""

EXIT_OK = 0
EXIT_DENIED = 1
EXIT_USAGE = 2
