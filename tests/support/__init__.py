"""Code the tests share that is not a fixture: model conversion, real server processes."""
