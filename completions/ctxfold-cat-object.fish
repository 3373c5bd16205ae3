complete -c ctxfold-cat-object -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold-cat-object -s p -d 'Print the object\'s raw bytes'
complete -c ctxfold-cat-object -s s -d 'Print the object\'s raw size in bytes'
complete -c ctxfold-cat-object -s e -d 'Exit 0 when the object exists and is intact, 1 otherwise; print nothing'
complete -c ctxfold-cat-object -l batch -d 'For each name on stdin print `<sha256> blob <size>`, the bytes, and a newline'
complete -c ctxfold-cat-object -l batch-check -d 'For each name on stdin print `<sha256> blob <size>`'
complete -c ctxfold-cat-object -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold-cat-object -s V -l version -d 'Print version'
