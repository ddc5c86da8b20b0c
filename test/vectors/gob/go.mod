module vmzones/test/vectors/gob

go 1.26
