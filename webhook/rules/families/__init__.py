"""One module (or package) per API family, named by the family: ``families/kubedl.py`` serves the
family ``kubedl``. Importing it registers the family's kinds (``registry.register``); nothing
imports every family here, the registry loads each when it is first needed (``family_index``)."""
