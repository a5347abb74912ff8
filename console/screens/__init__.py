"""One module per screen; each is a mode of the app, one key away."""
