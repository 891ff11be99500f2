"""The controller (``jobgate controller``): jobs into pods and services, and the policy audit.

``engine`` plans a pass from a job's common model, ``runtime`` watches and executes the plans,
``adapters/<family>`` turn each family's jobs into the model and its status back.
"""
