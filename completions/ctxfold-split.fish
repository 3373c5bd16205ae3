complete -c ctxfold-split -l field-threshold -d 'String values whose raw token is at least this many bytes become field parts' -r
complete -c ctxfold-split -l max-json-line-bytes -d 'Lines longer than this (with their newline) are not parsed, only chunked' -r
complete -c ctxfold-split -l cdc-min-bytes -d 'FastCDC minimum chunk size for the bytes between fields' -r
complete -c ctxfold-split -l cdc-average-bytes -d 'FastCDC average chunk size' -r
complete -c ctxfold-split -l cdc-max-bytes -d 'FastCDC maximum chunk size' -r
complete -c ctxfold-split -l level -d 'zstd level for new objects' -r
complete -c ctxfold-split -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold-split -l write -d 'Store each part\'s object (new ones compressed; present ones only touched)'
complete -c ctxfold-split -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold-split -s V -l version -d 'Print version'
