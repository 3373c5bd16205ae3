complete -c ctxfold-verify-span -l sha256 -d 'The span\'s sha256 (hex): the text is printed only if it matches' -r
complete -c ctxfold-verify-span -l session -d 'Read the folded session with this id out of the store' -r
complete -c ctxfold-verify-span -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold-verify-span -l batch -d 'Check the spans listed on stdin (`BLOCKID<TAB>SHA256` lines)'
complete -c ctxfold-verify-span -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold-verify-span -s V -l version -d 'Print version'
