"""Wiki quality (issue 15, spec/001 K3.7-K3.9): advisory lint, faithfulness review, validation signals.

Pure rules: ``lint`` (the seven lint rules), ``review`` (page selection, prompt, reply parsing, status, the
standing warning), ``attribution`` (signal vocabulary and the attribution rules of prior-art §4.10).
"""
