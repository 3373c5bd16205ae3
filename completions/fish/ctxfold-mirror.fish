complete --keep-order --exclusive --command ctxfold-mirror --arguments "(COMPLETE=fish ctxfold-mirror -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
