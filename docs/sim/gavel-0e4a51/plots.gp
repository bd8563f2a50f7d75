# gnuplot script written by colloc sim; run it in this directory.
set terminal svg size 900,450 dynamic font 'sans,12'
set key outside right
set grid
set output 'util.svg'
set title "GPU utilization over time: 0e4a51.trace on 4x8xV100-32GB" noenhanced
set xlabel 'time (hours)'
set ylabel 'GPU utilization (0-1)'
set yrange [0:1]
plot 'util_exclusive.dat' using 1:2 with steps lw 2 title 'exclusive', 'util_round-robin.dat' using 1:2 with steps lw 2 title 'round-robin', 'util_most-free-memory.dat' using 1:2 with steps lw 2 title 'most-free-memory', 'util_least-utilized.dat' using 1:2 with steps lw 2 title 'least-utilized', 'util_request.dat' using 1:2 with steps lw 2 title 'request', 'util_fgd.dat' using 1:2 with steps lw 2 title 'fgd', 'util_estimate-aware.dat' using 1:2 with steps lw 2 title 'estimate-aware'
set output 'jct_cdf.svg'
set title "Job completion time CDF: 0e4a51.trace on 4x8xV100-32GB" noenhanced
set xlabel 'job completion time (hours, log scale)'
set ylabel 'fraction of jobs'
set logscale x
plot 'jct_exclusive.dat' using 1:2 with lines lw 2 title 'exclusive', 'jct_round-robin.dat' using 1:2 with lines lw 2 title 'round-robin', 'jct_most-free-memory.dat' using 1:2 with lines lw 2 title 'most-free-memory', 'jct_least-utilized.dat' using 1:2 with lines lw 2 title 'least-utilized', 'jct_request.dat' using 1:2 with lines lw 2 title 'request', 'jct_fgd.dat' using 1:2 with lines lw 2 title 'fgd', 'jct_estimate-aware.dat' using 1:2 with lines lw 2 title 'estimate-aware'
