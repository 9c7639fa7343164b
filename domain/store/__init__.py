"""The single-table store: PynamoDB models, table lifecycle and transactional writes.

Key design and every access pattern: docs/data-model.md.
"""
