"""What the test suites share: builders of repositories, reviews and receipts, servers with
scripted replies, real SSH keys. Test files import from here, never from each other."""
