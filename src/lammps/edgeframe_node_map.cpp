#include "edgeframe_node_map.h"

#include "neigh_list.h"
#include "neighbor.h"

using namespace LAMMPS_NS;
using namespace LAMMPS_NS::edgeframe_glue;

void NodeMap::build(const int *type, int nlocal, int nall, const std::vector<int> &type_species, const NeighList *list,
                    int layers)
{
  auto mapped = [&](int a) { return type_species[type[a]] >= 0; };

  // Breadth-first hop count from the owned atoms over the neighbour list (receiver i lists
  // its senders j). Only atoms that appear as list owners (owned + ghosts with neighbours)
  // can pass hops on.
  m_hop.assign(nall, -1);
  m_frontier.clear();
  n_candidates = 0;
  for (int i = 0; i < nall; i++) n_candidates += mapped(i);
  for (int i = 0; i < nlocal; i++)
    if (mapped(i)) {
      m_hop[i] = 0;
      m_frontier.push_back(i);
    }
  for (int h = 0; h < layers && !m_frontier.empty(); h++) {
    m_next.clear();
    for (int i : m_frontier) {
      const int *jlist = list->firstneigh[i];
      for (int jj = 0; jj < list->numneigh[i]; jj++) {
        const int j = jlist[jj] & NEIGHMASK;
        if (m_hop[j] < 0 && mapped(j)) {
          m_hop[j] = h + 1;
          m_next.push_back(j);
        }
      }
    }
    m_frontier.swap(m_next);
  }

  number_marked_atoms(type, nlocal, nall, type_species);

  // Pairs kept when the receiver's features matter at some layer, i.e. it is at most T-1 hops
  // from an owned atom; owned and ghost list owners alike.
  collect_pairs(list, list->inum + list->gnum, layers - 1);
}

// Pairs in receiver order (LAMMPS list order) among the first n_receivers list owners whose
// mark m_hop is in [0, max_hop], to every sender that is a node.
void NodeMap::collect_pairs(const NeighList *list, int n_receivers, int max_hop)
{
  pair_i.clear();
  pair_j.clear();
  pair_image.clear();
  for (int ii = 0; ii < n_receivers; ii++) {
    const int i = list->ilist[ii];
    if (m_hop[i] < 0 || m_hop[i] > max_hop) continue;
    const int ni = node_of_atom[i];
    const int *jlist = list->firstneigh[i];
    for (int jj = 0; jj < list->numneigh[i]; jj++) {
      const int nj = node_of_atom[jlist[jj] & NEIGHMASK];
      if (nj < 0) continue;
      pair_i.push_back(ni);
      pair_j.push_back(nj);
    }
  }
}

// Nodes = the atoms m_hop marks (>= 0), in LAMMPS index order: owned atoms are 0..nlocal-1 in
// LAMMPS, so they come first and n_local counts them.
void NodeMap::number_marked_atoms(const int *type, int nlocal, int nall, const std::vector<int> &type_species)
{
  node_of_atom.assign(nall, -1);
  atom_of_node.clear();
  species.clear();
  n_local = 0;
  for (int i = 0; i < nall; i++) {
    if (m_hop[i] < 0) continue;
    node_of_atom[i] = (int) atom_of_node.size();
    atom_of_node.push_back(i);
    species.push_back(type_species[type[i]]);
    n_local += i < nlocal;
  }
}

void NodeMap::build_exchange(const int *type, int nlocal, int nall, const std::vector<int> &type_species,
                             const NeighList *list)
{
  auto mapped = [&](int a) { return type_species[type[a]] >= 0; };
  // m_hop as a mark: 0 for mapped owned atoms, 1 for mapped ghosts next to one of them.
  m_hop.assign(nall, -1);
  n_candidates = 0;
  for (int i = 0; i < nall; i++) n_candidates += mapped(i);
  for (int i = 0; i < nlocal; i++)
    if (mapped(i)) m_hop[i] = 0;
  for (int ii = 0; ii < list->inum; ii++) {
    const int i = list->ilist[ii];
    if (m_hop[i] != 0) continue;
    const int *jlist = list->firstneigh[i];
    for (int jj = 0; jj < list->numneigh[i]; jj++) {
      const int j = jlist[jj] & NEIGHMASK;
      if (j >= nlocal && m_hop[j] < 0 && mapped(j)) m_hop[j] = 1;
    }
  }

  number_marked_atoms(type, nlocal, nall, type_species);
  collect_pairs(list, list->inum, 0);    // owned receivers only (the mapped ones are marked 0)
}
