"""The runtime twins of the shared forms: one module per group, the functions the generated checks
call. A job's review imports these, never a declaration."""
