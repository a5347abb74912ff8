"""The API's routers, one per resource; `agent.api.app.create_app` includes them in order."""
