"""Certificates for the webhook: a CA, serving certificates, renewal and CA rotation."""
