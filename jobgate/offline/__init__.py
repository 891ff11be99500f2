"""The offline command's parts (``jobgate validate``, ``default``): reading files and reporting.

``sources`` finds and reads files, ``loader`` parses YAML with the line of every node, ``results``
puts each document through the engine (mutate, then validate) and ``report`` prints the results
in text, JSON, JUnit or GitHub form.
"""
