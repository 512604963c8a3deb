"""The sample files (SVMlight): ssl_svm.sample_path(name) gives their paths."""
