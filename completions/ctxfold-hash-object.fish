complete -c ctxfold-hash-object -l level -d 'zstd level for new objects' -r
complete -c ctxfold-hash-object -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold-hash-object -s w -d 'Write the objects into the store, not only name them'
complete -c ctxfold-hash-object -l stdin -d 'Read the object from stdin'
complete -c ctxfold-hash-object -l stdin-paths -d 'Read file paths from stdin, one per line, instead of from the command line'
complete -c ctxfold-hash-object -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold-hash-object -s V -l version -d 'Print version'
