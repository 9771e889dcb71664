"""Every option once: the table, values, schema, the config file and the flag > env > config >
default merge.
"""
