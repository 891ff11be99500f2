"""Wire models every family shares (pod templates, run policies, job status) and the API groups."""
