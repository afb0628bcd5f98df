"""State without decisions: typed object views, the informer layer, the assume layer.

Nothing here decides where anything goes and nothing here waits on the network; the
scheduling package reads this state, the daemon package fills it.
"""
