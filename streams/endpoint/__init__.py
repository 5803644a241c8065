"""`replygate deliveries`: a platform endpoint that re-validates,
de-duplicates and hands deliveries on.
"""
