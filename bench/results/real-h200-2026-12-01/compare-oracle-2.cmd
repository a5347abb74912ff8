agent bench compare --url URL_OF_tiny-oracle --concurrency 1,4,16,64,128 --input-len 256 --output-len 128 --repeats 2 --min-window-s 2.5 --json compare-oracle-2.json 
