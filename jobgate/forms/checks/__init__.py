"""The runtime twins of the shared forms: one module per group, the functions the generated checks
call. A job's review imports these, never a declaration."""

# The runtime modules, in the order the generator looks a function up (jobgate.forms.python_text) and
# the compiled build compiles them (build_support/native.py).
RUNTIME_MODULES = (
    "jobgate.forms.checks.common",
    "jobgate.forms.checks.defaults",
    "jobgate.forms.checks.roles",
    "jobgate.forms.checks.fields",
    "jobgate.forms.checks.replica_maps",
    "jobgate.forms.checks.entries",
    "jobgate.forms.checks.t9k",
    "jobgate.forms.checks.volcano",
)
