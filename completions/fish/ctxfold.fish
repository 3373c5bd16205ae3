complete --keep-order --exclusive --command ctxfold --arguments "(COMPLETE=fish ctxfold -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
