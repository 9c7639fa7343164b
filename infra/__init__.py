"""The local stack (DynamoDB Local, tables, dev seed) and deployment helpers."""
