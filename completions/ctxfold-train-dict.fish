complete -c ctxfold-train-dict -l max-size -d 'Largest dictionary to train, in bytes' -r
complete -c ctxfold-train-dict -l sample-bytes -d 'How many bytes of objects to train on at most' -r
complete -c ctxfold-train-dict -l max-object-bytes -d 'Objects stored in more than this many bytes are left out (they gain little)' -r
complete -c ctxfold-train-dict -l use -d 'Instead of training, write new objects with this registered dictionary (`none`: without)' -r
complete -c ctxfold-train-dict -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold-train-dict -l no-use -d 'Register the dictionary but keep writing new objects as before'
complete -c ctxfold-train-dict -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold-train-dict -s V -l version -d 'Print version'
