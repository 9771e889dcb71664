"""What a review reads: gathering files, ignore rules, places, secret scan, pins and git-based
context.
"""
