complete -c ctxfold-extract-seeds -l session -d 'Read the folded session with this id out of the store' -r
complete -c ctxfold-extract-seeds -l through -d 'Give the record of one fold event up to this entry (a Pi entry id or a line number)' -r
complete -c ctxfold-extract-seeds -l trigger -d 'The fold event\'s trigger' -r -f -a "threshold\t''
cap\t''"
complete -c ctxfold-extract-seeds -l seq -d 'The fold event\'s seq' -r
complete -c ctxfold-extract-seeds -l tokens -d 'The context\'s size in tokens at the fold event' -r
complete -c ctxfold-extract-seeds -l context-window -d 'The model\'s context window in tokens' -r
complete -c ctxfold-extract-seeds -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold-extract-seeds -l final -d 'Add a `compact` record over the whole active branch'
complete -c ctxfold-extract-seeds -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold-extract-seeds -s V -l version -d 'Print version'
