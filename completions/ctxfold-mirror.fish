complete -c ctxfold-mirror -l git -d 'The mirror repository [default: <store>/mirror.git]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold-mirror -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold-mirror -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold-mirror -s V -l version -d 'Print version'
