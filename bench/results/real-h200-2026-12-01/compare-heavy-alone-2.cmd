agent bench compare --url URL_OF_heavy-spec --concurrency 1,16,128 --input-len 256 --output-len 128 --repeats 2 --min-window-s 2.5 --json compare-heavy-alone-2.json 
