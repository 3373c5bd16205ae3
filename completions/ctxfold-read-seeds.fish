complete -c ctxfold-read-seeds -l pi-session -d 'Read the extension\'s seed index of this Pi session file' -r -F
complete -c ctxfold-read-seeds -l session -d 'Read the store\'s seed index of this session' -r
complete -c ctxfold-read-seeds -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold-read-seeds -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold-read-seeds -s V -l version -d 'Print version'
