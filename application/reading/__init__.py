"""The read layer every front end shows: answers built from the views and the services'
results (answers.py, decided.py, definitions.py), and the schemas they are shaped by. The API,
the console and the CLI all read here; nothing here imports a front end."""
