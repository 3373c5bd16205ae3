complete --keep-order --exclusive --command ctxfold-split --arguments "(COMPLETE=fish ctxfold-split -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
