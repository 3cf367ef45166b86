"""The run console: server-rendered pages over the API's services, served at /."""
