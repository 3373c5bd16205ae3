complete -c ctxfold-cat-manifest -l manifest -d 'Read this manifest file instead of the store\'s manifest for a session' -r -F
complete -c ctxfold-cat-manifest -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold-cat-manifest -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold-cat-manifest -s V -l version -d 'Print version'
