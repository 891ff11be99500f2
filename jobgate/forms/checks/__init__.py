"""The runtime twins of the shared forms: one module per group, the functions the generated checks
call. A job's review imports these, never a declaration. The twins of the forms only one family uses
live in that family's package (its record's ``form_checks``)."""

# The shared runtime modules, in the order the generator looks a function up; every runtime module,
# the families' included, is jobgate.forms.runtime_modules.RUNTIME_MODULES.
SHARED_RUNTIME_MODULES = (
    "jobgate.forms.checks.common",
    "jobgate.forms.checks.defaults",
    "jobgate.forms.checks.roles",
    "jobgate.forms.checks.fields",
    "jobgate.forms.checks.replica_maps",
    "jobgate.forms.checks.entries",
)
